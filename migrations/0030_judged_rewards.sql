CREATE TABLE `judgements` (
	`episode_id` text NOT NULL,
	`seq` integer NOT NULL,
	`group_id` text NOT NULL,
	`component` text NOT NULL,
	`model` text NOT NULL,
	`prompt` text NOT NULL,
	`response` text NOT NULL,
	`value` real,
	`reason` text,
	`error` text,
	`attempt` integer NOT NULL,
	`latency_ms` integer NOT NULL,
	`created_at` text NOT NULL,
	PRIMARY KEY(`episode_id`, `seq`)
);
--> statement-breakpoint
CREATE INDEX `judgements_group` ON `judgements` (`group_id`);--> statement-breakpoint
CREATE TABLE `reward_components` (
	`episode_id` text NOT NULL,
	`name` text NOT NULL,
	`group_id` text NOT NULL,
	`value` real NOT NULL,
	`weight` real NOT NULL,
	PRIMARY KEY(`episode_id`, `name`)
);
--> statement-breakpoint
CREATE INDEX `reward_components_group` ON `reward_components` (`group_id`);--> statement-breakpoint
ALTER TABLE `episodes` ADD `played_end_reason` text;--> statement-breakpoint
ALTER TABLE `episodes` ADD `step_metadata` text;--> statement-breakpoint
ALTER TABLE `messages` ADD `metadata` text;