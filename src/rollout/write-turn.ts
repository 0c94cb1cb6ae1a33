/**
 * Every event in which a Durable Object writes ends with its own SQLite commit, and locally a
 * commit costs several times what the writes in it do (docs/benchmarks.md). A group's episodes get
 * their answers (from the host, from the step worker) in separate events, so each would commit
 * on its own. Instead an episode that has an answer to record waits for the group's next write
 * turn: one timer, shared by every episode that arrives before it fires, in whose event they
 * all record, and commit, together. Nothing is acted on before it is written: the writes still
 * come first, and the runtime holds outgoing calls until their commit is durable.
 */
export function sharedWriteTurn(): () => Promise<void> {
  let next: Promise<void> | null = null;
  return () => {
    next ??= new Promise<void>((resolve) =>
      setTimeout(() => {
        next = null;
        resolve();
      }, 0),
    );
    return next;
  };
}
