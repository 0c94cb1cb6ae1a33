ALTER TABLE `episodes` ADD `tools_hash` text;--> statement-breakpoint
ALTER TABLE `groups` ADD `tools` text;