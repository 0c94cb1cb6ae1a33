/**
 * Changes to the Worker's sources, for the one case wrangler does not watch them itself: when
 * its very first build failed, esbuild has no build to watch from, so wrangler never builds
 * again. `npm run dev` then watches the sources and starts wrangler anew on the next save.
 */
import { type FSWatcher, watch } from "node:fs";

/** Calls `onChange` once per burst of changes (an editor's save is often several events). */
export function watchSources(dirs: readonly string[], onChange: () => void): () => void {
  let timer: ReturnType<typeof setTimeout> | null = null;
  const changed = () => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(onChange, 300);
  };
  const watchers: FSWatcher[] = dirs.map((dir) => watch(dir, { recursive: true }, changed));
  return () => {
    if (timer) clearTimeout(timer);
    for (const watcher of watchers) watcher.close();
  };
}
