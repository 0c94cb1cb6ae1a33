/** The dashboard, served by the Worker: server-rendered pages over the same data as the API. */
import { Hono } from "hono";
import { findEpisode } from "../db/queries";
import { fleetScheduler } from "../rollout/bindings";
import { episodeView } from "../views/episode-view";
import { findGroupView } from "../views/group-view";
import { EpisodePage } from "./episode-page";
import { GroupPage } from "./group-page";
import { Layout } from "./layout";
import { OverviewPage } from "./overview-page";
import { hostStats, overview } from "./queries";

function NotFound(props: { what: string }) {
  return (
    <Layout title="not found">
      <h1>Not found</h1>
      <p>{props.what}</p>
      <a href="/">back to the overview</a>
    </Layout>
  );
}

export const dashboardRoutes = new Hono<{ Bindings: Env }>()
  .get("/", async (c) => {
    const run = c.req.query("run") ?? null;
    const [data, live, stats] = await Promise.all([
      overview(c.env.DB, run),
      // The page still serves when the fleet's configuration does not read; the API says why.
      fleetScheduler(c.env)
        .hosts()
        .catch(() => []),
      hostStats(c.env.DB, run),
    ]);
    return c.html(<OverviewPage data={data} hosts={{ live, stats }} run={run} />);
  })
  .get("/groups/:id", async (c) => {
    const id = c.req.param("id");
    const group = await findGroupView(c.env, id);
    if (group === null) return c.html(<NotFound what={`No group ${id}.`} />, 404);
    return c.html(<GroupPage group={group} />);
  })
  .get("/episodes/:id", async (c) => {
    const found = await findEpisode(c.env.DB, c.req.param("id"));
    if (!found)
      return c.html(
        <NotFound what="No landed episode with that id (episodes appear when their group lands)." />,
        404,
      );
    return c.html(<EpisodePage episode={episodeView(found)} />);
  });
