/** An edge of the dependency graph: the asset at `to` is the dependency at index `depIndex`. */
export interface DependencyEdge {
  readonly to: number;
  readonly depIndex: number;
}

/**
 * A cycle closed by the edge `from` → `nodes[0]` (the dependency at `depIndex` of `from`).
 * `nodes` lists the assets along the cycle starting at `nodes[0]` and ending at `from`;
 * a long cycle keeps only its first and last assets: `omitted` of them are left out
 * between `nodes[omittedAfter - 1]` and `nodes[omittedAfter]`.
 */
export interface DependencyCycle {
  readonly from: number;
  readonly depIndex: number;
  readonly nodes: readonly number[];
  readonly omitted: number;
  readonly omittedAfter: number;
}

const UNVISITED = 0;
const ON_PATH = 1;
const DONE = 2;

/**
 * Every cycle closed by a back edge of a depth-first search that starts from the nodes in
 * order and follows each node's edges in order, so each cycle is reported once and the
 * result is deterministic. Without the closing edges of the reported cycles the graph has
 * no cycle left.
 * Iterative, so a long dependency chain cannot overflow the call stack; naming at most
 * `maxNamed` nodes per cycle keeps the output linear in the input.
 */
export function findDependencyCycles(
  edges: ReadonlyArray<ReadonlyArray<DependencyEdge>>,
  maxNamed = 20,
): DependencyCycle[] {
  const state = new Uint8Array(edges.length);
  const positionOnPath = new Int32Array(edges.length);
  const path: number[] = [];
  const nextEdge: number[] = [];
  const cycles: DependencyCycle[] = [];

  for (let root = 0; root < edges.length; root += 1) {
    if (state[root] !== UNVISITED) continue;
    enter(root);
    while (path.length > 0) {
      const top = path.length - 1;
      const node = path[top]!;
      const edgeIndex = nextEdge[top]!;
      const nodeEdges = edges[node]!;
      if (edgeIndex >= nodeEdges.length) {
        state[node] = DONE;
        path.pop();
        nextEdge.pop();
        continue;
      }
      nextEdge[top] = edgeIndex + 1;
      const edge = nodeEdges[edgeIndex]!;
      if (state[edge.to] === UNVISITED) enter(edge.to);
      else if (state[edge.to] === ON_PATH) cycles.push(cycleClosedBy(node, edge, positionOnPath[edge.to]!));
    }
  }
  return cycles;

  function enter(node: number): void {
    state[node] = ON_PATH;
    positionOnPath[node] = path.length;
    path.push(node);
    nextEdge.push(0);
  }

  function cycleClosedBy(from: number, edge: DependencyEdge, start: number): DependencyCycle {
    const length = path.length - start;
    if (length <= maxNamed) {
      return { from, depIndex: edge.depIndex, nodes: path.slice(start), omitted: 0, omittedAfter: length };
    }
    const head = Math.ceil(maxNamed / 2);
    const tail = maxNamed - head;
    return {
      from,
      depIndex: edge.depIndex,
      nodes: [...path.slice(start, start + head), ...path.slice(path.length - tail)],
      omitted: length - maxNamed,
      omittedAfter: head,
    };
  }
}
