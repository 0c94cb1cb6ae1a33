// The bearer token the test remote environments require and the Worker under test sends. A file
// of its own so vitest.config.ts can read it without loading the fixtures (and all of src/).
export const REMOTE_ENV_TOKEN = "remote-env-test-secret";
