ALTER TABLE `episodes` ADD `teacher_model` text;--> statement-breakpoint
ALTER TABLE `episodes` ADD `reverse_kl` real;--> statement-breakpoint
ALTER TABLE `groups` ADD `generation` text DEFAULT 'chat' NOT NULL;--> statement-breakpoint
ALTER TABLE `groups` ADD `algorithm` text DEFAULT 'grpo' NOT NULL;--> statement-breakpoint
ALTER TABLE `groups` ADD `teacher_model` text;