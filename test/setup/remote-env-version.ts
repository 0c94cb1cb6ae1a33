// The version the test remote guess-number declares in its /info: not the built-in's, so a test
// can tell which one a group recorded. A file of its own so workerd tests import no Node code.
export const REMOTE_GUESS_NUMBER_VERSION = "remote-7";
