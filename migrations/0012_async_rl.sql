ALTER TABLE `episodes` ADD `policy_version_min` integer;--> statement-breakpoint
ALTER TABLE `episodes` ADD `policy_version_max` integer;--> statement-breakpoint
ALTER TABLE `groups` ADD `policy_version_min` integer;--> statement-breakpoint
ALTER TABLE `groups` ADD `policy_version_max` integer;--> statement-breakpoint
CREATE INDEX `groups_run_status` ON `groups` (`run_id`,`status`,`delivery_state`);--> statement-breakpoint
ALTER TABLE `messages` ADD `policy_version` integer;--> statement-breakpoint
ALTER TABLE `run_policies` ADD `revision` integer DEFAULT 1 NOT NULL;