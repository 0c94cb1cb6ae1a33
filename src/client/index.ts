/** The package's public entry for trainers and tools: the HTTP client and the environment SDK. */
export * from "../sdk";
export * from "./edgeroll-client";
