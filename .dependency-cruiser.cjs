/**
 * The architecture as rules (`npm run check` runs them): no import cycles, and every import runs
 * down the layers below, never up or sideways. A folder (or a file at the top of src/) may use
 * only folders of lower layers, and itself.
 */
const LAYERS = [
  ["utils"], // small helpers that know nothing of edgeroll
  // the environment SDK; token-exact episodes, as arrays and bytes; the enums rows and wire share
  ["sdk", "tokens", "domain", "costs"], // costs: prices, a run's spend, the budget rule
  // datasets: pushed JSONL in R2; judges: the judge model a score hook asks
  ["environments", "inference", "judges", "db", "config.ts", "sim", "datasets"],
  ["policy"], // the run's policy: its wire shapes, the lag rule, pacing, the push to groups
  ["env-workers", "trainer", "distill"], // the teacher of on-policy distillation
  ["rollout"], // the group object, its storage, turns, rewards, landing
  ["views"], // the read side: what the API answers and the dashboard shows
  ["api", "dashboard"],
  ["producer"], // a run that produces itself: it starts groups as POST /v1/groups does
  ["app.ts", "client"], // the route table; the HTTP client (types from the views)
  ["index.ts"], // the Worker's exports
  ["cli"], // the command line, on top of everything
];

const path = (name) => `^src/${name.replace(".", "\\.")}${name.endsWith(".ts") ? "$" : "/"}`;

const forbidden = [
  {
    name: "no-circular",
    severity: "error",
    comment: "An import cycle means two modules cannot be understood (or loaded) apart.",
    from: {},
    to: { circular: true },
  },
];
LAYERS.forEach((layer, rank) => {
  const notBelow = LAYERS.slice(rank).flat();
  for (const name of layer) {
    const others = notBelow.filter((other) => other !== name);
    if (others.length === 0) continue;
    forbidden.push({
      name: `layers: ${name}`,
      severity: "error",
      comment: `src/${name} may import only from layers below it: not ${others.join(", ")}.`,
      from: { path: path(name) },
      to: { path: others.map(path).join("|") },
    });
  }
});

module.exports = {
  forbidden,
  options: {
    // Type-only imports count: a type from a higher layer ties the layers together just as well.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.node.json" },
    doNotFollow: { path: "node_modules" },
    exclude: { path: "node_modules" },
  },
};
