CREATE TABLE `run_policies` (
	`run_id` text PRIMARY KEY NOT NULL,
	`version` integer NOT NULL,
	`max_lag` integer,
	`paused` integer DEFAULT false NOT NULL,
	`updated_at` text NOT NULL,
	`updated_by` text
);
