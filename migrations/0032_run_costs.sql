CREATE TABLE `run_budgets` (
	`run_id` text PRIMARY KEY NOT NULL,
	`max_sampled_tokens` integer,
	`max_prompt_tokens` integer,
	`max_usd` real,
	`max_groups` integer,
	`updated_at` text NOT NULL,
	`updated_by` text
);
--> statement-breakpoint
ALTER TABLE `episodes` ADD `cached_tokens` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `episodes` ADD `generations` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `episodes` ADD `retries` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `episodes` ADD `env_ms` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `episodes` ADD `teacher_tokens` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `episodes` ADD `judge_tokens` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `episodes` ADD `usd` real DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `episodes` ADD `unpriced_calls` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `groups` ADD `started_by` text;--> statement-breakpoint
ALTER TABLE `groups` ADD `score_ms` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `groups_started_by` ON `groups` (`started_by`,`status`);--> statement-breakpoint
ALTER TABLE `judgements` ADD `prompt_tokens` integer;--> statement-breakpoint
ALTER TABLE `judgements` ADD `cached_tokens` integer;--> statement-breakpoint
ALTER TABLE `judgements` ADD `completion_tokens` integer;--> statement-breakpoint
ALTER TABLE `judgements` ADD `usd` real;--> statement-breakpoint
ALTER TABLE `messages` ADD `usd` real;