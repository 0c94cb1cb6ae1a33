/**
 * The version an environment declares, which every group and episode records (`env_version`):
 * a built-in's class field, a remote environment's `GET /info`. A group reads it once, as it
 * starts; a remote environment redeployed mid-group is recorded at the version its group began
 * under (docs/architecture.md, "Environment versions").
 */
import { loadEnvironment, type RemoteEnvironments } from "./registry";
import { remoteInfo } from "./remote/remote-environment";

/**
 * How long this isolate trusts a remote environment's last `/info`: long enough that a burst of
 * group starts costs one call, short enough that a redeploy shows within seconds.
 */
export const REMOTE_VERSION_TTL_MS = 10_000;

/** By environment and URL: the answer in flight or last given, so a burst of starts asks once. */
const remoteVersions = new Map<string, { version: Promise<string>; until: number }>();

/** The named environment's declared version; a remote one's `/info` may throw RemoteEnvError. */
export async function environmentVersion(
  name: string,
  remote: RemoteEnvironments,
): Promise<string> {
  const target = remote.targets.get(name);
  if (target === undefined) return loadEnvironment(name, remote).version;
  const key = `${name} ${target.baseUrl}`;
  const known = remoteVersions.get(key);
  if (known !== undefined && known.until > Date.now()) return known.version;
  const version = remoteInfo(target, remote.limits.stepTimeoutMs).then((info) => info.version);
  remoteVersions.set(key, { version, until: Date.now() + REMOTE_VERSION_TTL_MS });
  // A failed call is not kept: the next start asks again.
  version.catch(() => {
    if (remoteVersions.get(key)?.version === version) remoteVersions.delete(key);
  });
  return version;
}
