ALTER TABLE `episodes` ADD `env_version` text;--> statement-breakpoint
ALTER TABLE `groups` ADD `env_version` text;