ALTER TABLE `episodes` ADD `overlong` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `groups` ADD `overlong` text DEFAULT 'keep' NOT NULL;