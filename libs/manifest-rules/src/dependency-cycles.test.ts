import { describe, expect, it } from 'vitest';
import { findDependencyCycles, type DependencyEdge } from './dependency-cycles.ts';

/** Edges from adjacency lists, each dependency at its list index. */
const graph = (lists: number[][]): DependencyEdge[][] =>
  lists.map((targets) => targets.map((to, depIndex) => ({ to, depIndex })));

describe('findDependencyCycles', () => {
  it('finds nothing in a graph without cycles', () => {
    expect(findDependencyCycles(graph([[], [0], [0, 1], [2, 1]]))).toEqual([]);
  });

  it('finds a self-dependency', () => {
    expect(findDependencyCycles(graph([[0]]))).toEqual([{ from: 0, depIndex: 0, nodes: [0], omitted: 0, omittedAfter: 1 }]);
  });

  it('reports a cycle once, from the first node in order', () => {
    expect(findDependencyCycles(graph([[1], [2], [0]]))).toEqual([
      { from: 2, depIndex: 0, nodes: [0, 1, 2], omitted: 0, omittedAfter: 3 },
    ]);
  });

  it('reports each back edge of a strongly connected group', () => {
    // 0 → 1 → 0 and 1 → 2 → 1 share node 1.
    const cycles = findDependencyCycles(graph([[1], [0, 2], [1]]));
    expect(cycles.map((cycle) => cycle.nodes)).toEqual([
      [0, 1],
      [1, 2],
    ]);
  });

  it('walks a chain of 100,000 nodes without overflowing the stack', () => {
    const size = 100_000;
    const lists = Array.from({ length: size }, (_, node) => (node + 1 < size ? [node + 1] : [0]));
    const cycles = findDependencyCycles(graph(lists));
    expect(cycles).toHaveLength(1);
    expect(cycles[0]).toMatchObject({ from: size - 1, depIndex: 0, omitted: size - 20, omittedAfter: 10 });
    expect(cycles[0]!.nodes).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, ...Array.from({ length: 10 }, (_, i) => size - 10 + i)]);
  });
});
