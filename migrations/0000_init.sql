CREATE TABLE `episodes` (
	`id` text PRIMARY KEY NOT NULL,
	`group_id` text NOT NULL,
	`idx` integer NOT NULL,
	`run_id` text NOT NULL,
	`env` text NOT NULL,
	`example_id` text NOT NULL,
	`policy_version` integer NOT NULL,
	`status` text NOT NULL,
	`end_reason` text NOT NULL,
	`failure_reason` text,
	`failure_detail` text,
	`score` real,
	`threshold` real,
	`success` integer,
	`advantage` real,
	`per_turn_rewards` text,
	`per_turn_advantages` text,
	`reward_metadata` text,
	`turns` integer NOT NULL,
	`prompt_tokens` integer,
	`completion_tokens` integer,
	`total_tokens` integer,
	`latency_ms` integer NOT NULL,
	`redispatches` integer NOT NULL,
	`response_text` text NOT NULL,
	`created_at` text NOT NULL,
	`finished_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `episodes_group` ON `episodes` (`group_id`);--> statement-breakpoint
CREATE INDEX `episodes_run` ON `episodes` (`run_id`);--> statement-breakpoint
CREATE INDEX `episodes_env` ON `episodes` (`env`);--> statement-breakpoint
CREATE INDEX `episodes_status` ON `episodes` (`status`);--> statement-breakpoint
CREATE INDEX `episodes_created` ON `episodes` (`created_at`);--> statement-breakpoint
CREATE TABLE `groups` (
	`id` text PRIMARY KEY NOT NULL,
	`run_id` text NOT NULL,
	`env` text NOT NULL,
	`example_id` text NOT NULL,
	`example` text NOT NULL,
	`policy_version` integer NOT NULL,
	`group_size` integer NOT NULL,
	`status` text NOT NULL,
	`failure_reason` text,
	`credit_assignment` text NOT NULL,
	`credit_applied` text,
	`advantage` text NOT NULL,
	`warnings` text NOT NULL,
	`score_mean` real,
	`score_std` real,
	`episodes_failed` integer,
	`sampling` text NOT NULL,
	`max_context_tokens` integer NOT NULL,
	`prompt_text` text NOT NULL,
	`request_hash` text NOT NULL,
	`idempotency_key` text,
	`created_at` text NOT NULL,
	`finished_at` text
);
--> statement-breakpoint
CREATE INDEX `groups_run_created` ON `groups` (`run_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `groups_env` ON `groups` (`env`);--> statement-breakpoint
CREATE INDEX `groups_status` ON `groups` (`status`);--> statement-breakpoint
CREATE INDEX `groups_created` ON `groups` (`created_at`);--> statement-breakpoint
CREATE TABLE `messages` (
	`episode_id` text NOT NULL,
	`seq` integer NOT NULL,
	`group_id` text NOT NULL,
	`turn` integer,
	`role` text NOT NULL,
	`content` text NOT NULL,
	`name` text,
	`tool_calls` text,
	`tool_call_id` text,
	`sampled` integer NOT NULL,
	`prompt_tokens` integer,
	`completion_tokens` integer,
	`finish_reason` text,
	`latency_ms` integer,
	`attempts` integer,
	`truncated` integer,
	PRIMARY KEY(`episode_id`, `seq`)
);
--> statement-breakpoint
CREATE INDEX `messages_group` ON `messages` (`group_id`);