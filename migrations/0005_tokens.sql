ALTER TABLE `episodes` ADD `token_mode` text DEFAULT 'none' NOT NULL;--> statement-breakpoint
ALTER TABLE `episodes` ADD `prefix_breaks` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `episodes` ADD `sample_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `groups` ADD `token_object` text;--> statement-breakpoint
ALTER TABLE `groups` ADD `token_object_bytes` integer;--> statement-breakpoint
ALTER TABLE `messages` ADD `model` text;--> statement-breakpoint
ALTER TABLE `messages` ADD `logprob_sum` real;--> statement-breakpoint
ALTER TABLE `messages` ADD `new_prompt_tokens` integer;--> statement-breakpoint
ALTER TABLE `messages` ADD `prefix_break` integer;