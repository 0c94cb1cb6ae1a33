CREATE TABLE `policy_syncs` (
	`run_id` text NOT NULL,
	`revision` integer NOT NULL,
	`interrupt` integer NOT NULL,
	`paused_at` text NOT NULL,
	`in_flight_at_answer` integer,
	`idle_at` text,
	PRIMARY KEY(`run_id`, `revision`)
);
