/**
 * Where a group is: `running` its episodes, `scoring` them (both live, in its object; D1 says
 * `running` throughout), then `landed` in D1, or `failed` there when every episode failed.
 */
import { z } from "zod";

export const GroupStatusSchema = z.enum(["running", "scoring", "landed", "failed"]);
export type GroupStatus = z.infer<typeof GroupStatusSchema>;
