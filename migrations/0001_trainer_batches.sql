CREATE TABLE `batch_groups` (
	`batch_id` text NOT NULL,
	`group_id` text NOT NULL,
	PRIMARY KEY(`batch_id`, `group_id`)
);
--> statement-breakpoint
CREATE INDEX `batch_groups_group` ON `batch_groups` (`group_id`);--> statement-breakpoint
CREATE TABLE `batches` (
	`id` text PRIMARY KEY NOT NULL,
	`state` text NOT NULL,
	`group_count` integer NOT NULL,
	`episode_count` integer NOT NULL,
	`created_at` text NOT NULL,
	`lease_expires_at` text NOT NULL,
	`settled_at` text
);
--> statement-breakpoint
ALTER TABLE `groups` ADD `uniform` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `groups` ADD `delivery_state` text DEFAULT 'available' NOT NULL;--> statement-breakpoint
ALTER TABLE `groups` ADD `deliveries` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `groups` ADD `lease_id` text;--> statement-breakpoint
ALTER TABLE `groups` ADD `lease_expires_at` text;--> statement-breakpoint
ALTER TABLE `groups` ADD `acked_at` text;--> statement-breakpoint
CREATE INDEX `groups_delivery` ON `groups` (`status`,`delivery_state`,`finished_at`);--> statement-breakpoint
CREATE INDEX `groups_lease` ON `groups` (`lease_id`);