-- 0006_checkpoint_stage.sql — the stage of a two-stage job (issue 14 item 5,
-- `second_stage:`) a checkpoint belongs to.  Brings the database to version 6.
--
-- 0: a one-stage job; 1 or 2: that stage of a two-stage job, whose `step`
-- counts on across its stages (stage 2's step k is recorded as stage 1's
-- num_inference_steps + k; the upsampled latents stage 2 starts from as its
-- first step, where denoise_strength starts it), so a job's checkpoints are
-- still one trajectory ordered by step (checkpoints.h).
ALTER TABLE checkpoints ADD COLUMN stage INTEGER NOT NULL DEFAULT 0;
