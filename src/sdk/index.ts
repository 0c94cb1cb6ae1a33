/** The environment SDK: everything an environment author imports. Runs in workerd and Node. */
export * from "./action-protocol";
export * from "./check-environment";
export * from "./credit";
export * from "./dataset";
export * from "./environment";
export * from "./episode";
export * from "./episode-loop";
export * from "./errors";
export * from "./example-metadata";
export * from "./example-schema";
export * from "./gold-transcript";
export * from "./replay";
export * from "./sft";
export * from "./sft-target";
export * from "./tool-calls";
export * from "./transcript";
export * from "./types";
