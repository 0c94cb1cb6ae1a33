#!/usr/bin/env node
// The edgeroll CLI. Runs the TypeScript sources through tsx, so there is no build step.
import { register } from "tsx/esm/api";

register();
await import("../src/cli/main.ts");
