// A plain Dinic max-flow on typed arrays: the baseline a careful JS programmer would write, and
// the independent float64 reference the benchmark checks attnflow's numbers against.
//
// Graph of SEMANTICS.md: nodes (l, i) for l = 0..layer, id l*n + i; an arc (l, i) -> (l-1, j) with
// capacity A[l][i][j] for every positive entry, plus its reverse arc. One graph is built per source
// layer and reused; every (source, sink) pair is a fresh max-flow (capacities reset), run by the
// textbook algorithm: BFS levels, then blocking flow by an iterative DFS with current-arc pointers.
// Residuals at or below EPS count as saturated, so rounding noise cannot make it loop.

const EPS = 1e-12;

/** The layered graph up to `layer` (1-based) of `mixed` (array of n*n Float64Array, index 0 = layer 1). */
export function buildGraph(mixed, n, layer) {
  const nodes = (layer + 1) * n;
  const degree = new Int32Array(nodes + 1);
  for (let l = 1; l <= layer; l++) {
    const A = mixed[l - 1];
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        if (A[i * n + j] > 0) {
          degree[l * n + i]++;
          degree[(l - 1) * n + j]++;
        }
      }
    }
  }
  const start = new Int32Array(nodes + 1);
  for (let v = 0; v < nodes; v++) start[v + 1] = start[v] + degree[v];
  const arcs = start[nodes];
  const to = new Int32Array(arcs);
  const rev = new Int32Array(arcs);
  const capacity = new Float64Array(arcs);
  const fill = start.slice(0, nodes);
  for (let l = 1; l <= layer; l++) {
    const A = mixed[l - 1];
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        const c = A[i * n + j];
        if (!(c > 0)) continue;
        const u = l * n + i;
        const v = (l - 1) * n + j;
        const a = fill[u]++;
        const b = fill[v]++;
        to[a] = v; rev[a] = b; capacity[a] = c;
        to[b] = u; rev[b] = a; capacity[b] = 0;
      }
    }
  }
  return {
    nodes, start, to, rev, capacity,
    residual: new Float64Array(arcs),
    level: new Int32Array(nodes),
    queue: new Int32Array(nodes),
    current: new Int32Array(nodes),
    path: new Int32Array(nodes),  // later phases may route through reverse arcs: up to all nodes
  };
}

/** Max-flow value from node `s` to node `t` of `graph` (capacities reset first). */
export function maxFlow(graph, s, t) {
  const { nodes, start, to, rev, capacity, residual, level, queue, current, path } = graph;
  residual.set(capacity);
  let total = 0;
  for (;;) {
    level.fill(-1);
    level[s] = 0;
    let head = 0;
    let tail = 0;
    queue[tail++] = s;
    while (head < tail) {
      const v = queue[head++];
      for (let a = start[v]; a < start[v + 1]; a++) {
        const w = to[a];
        if (level[w] < 0 && residual[a] > EPS) {
          level[w] = level[v] + 1;
          queue[tail++] = w;
        }
      }
    }
    if (level[t] < 0) return total;
    for (let v = 0; v < nodes; v++) current[v] = start[v];
    // Blocking flow: walk down admissible arcs; retreat from dead ends; augment at the sink.
    let depth = 0;
    let v = s;
    for (;;) {
      if (v === t) {
        let push = Infinity;
        for (let k = 0; k < depth; k++) push = Math.min(push, residual[path[k]]);
        for (let k = 0; k < depth; k++) {
          residual[path[k]] -= push;
          residual[rev[path[k]]] += push;
        }
        total += push;
        depth = 0;
        v = s;
        continue;
      }
      let a = current[v];
      const end = start[v + 1];
      while (a < end && !(residual[a] > EPS && level[to[a]] === level[v] + 1)) a++;
      current[v] = a;
      if (a < end) {
        path[depth++] = a;
        v = to[a];
      } else {
        level[v] = -1;  // dead end for the rest of this phase
        if (depth === 0) break;
        const back = path[--depth];
        v = to[rev[back]];
        current[v]++;
      }
    }
  }
}

/**
 * Raw flows for a list of pairs [layer (1-based), row, sink], reusing one graph per layer.
 * Stops after `budgetSeconds` (at least one pair); returns {values, seconds, measured}.
 */
export function plainFlowPairs(mixed, n, pairs, budgetSeconds = Infinity) {
  const values = [];
  const graphs = new Map();
  let seconds = 0;
  let buildSeconds = 0;
  for (const [layer, row, sink] of pairs) {
    if (values.length > 0 && seconds >= budgetSeconds) break;
    let graph = graphs.get(layer);
    if (!graph) {
      const built = performance.now();
      graph = buildGraph(mixed, n, layer);
      buildSeconds += (performance.now() - built) / 1000;
      graphs.set(layer, graph);
    }
    const started = performance.now();
    values.push(maxFlow(graph, layer * n + row, sink));
    seconds += (performance.now() - started) / 1000;
  }
  return { values, seconds, buildSeconds, measured: values.length };
}
