ALTER TABLE `groups` ADD `host_failures` text;--> statement-breakpoint
ALTER TABLE `messages` ADD `host` text;--> statement-breakpoint
ALTER TABLE `messages` ADD `cached_tokens` integer;