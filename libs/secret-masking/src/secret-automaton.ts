/**
 * An Aho–Corasick automaton over UTF-16 code units: one pass over a text finds, at each
 * position, the longest registered string that ends there, in time linear in the text's
 * length whatever the number of strings. Built once per set of strings.
 *
 * Hand-written rather than taken from npm: the kept library (`modern-ahocorasick`) matches
 * whole grapheme clusters, so a secret followed by a combining mark (`abcd` + U+0301) is
 * not found and stays readable (docs/decisions.md, "Secret masking").
 */
export class SecretAutomaton {
  /**
   * The trie in breadth-first order: a state's children are the states
   * `firstChild[s] .. firstChild[s] + childCount[s] - 1`, sorted by the code unit on the
   * edge into each (`edgeCode`), so a transition is a binary search in typed arrays.
   */
  private readonly firstChild: Int32Array;
  private readonly childCount: Int32Array;
  private readonly edgeCode: Uint16Array;
  private readonly failure: Int32Array;
  /** The length of the longest string that ends at each state (0: none). */
  private readonly longestEnding: Int32Array;
  readonly stringCount: number;
  readonly characterCount: number;

  constructor(strings: readonly string[]) {
    const sorted = [...new Set(strings)].filter((text) => text.length > 0).sort();
    const states = 1 + sorted.reduce((sum, text) => sum + text.length, 0);
    this.firstChild = new Int32Array(states);
    this.childCount = new Int32Array(states);
    this.edgeCode = new Uint16Array(states);
    this.failure = new Int32Array(states);
    this.longestEnding = new Int32Array(states);
    this.stringCount = sorted.length;
    // Each state stands for the sorted strings [low, high) that share its path of `depth` units.
    const low = [0];
    const high = [sorted.length];
    const depth = [0];
    let count = 1;
    for (let state = 0; state < count; state++) {
      const at = depth[state]!;
      this.firstChild[state] = count;
      for (let index = low[state]!; index < high[state]!; ) {
        const text = sorted[index]!;
        if (text.length === at) {
          this.longestEnding[state] = at;
          index++;
          continue;
        }
        const code = text.charCodeAt(at);
        let end = index + 1;
        while (end < high[state]! && sorted[end]!.charCodeAt(at) === code) end++;
        this.edgeCode[count] = code;
        low.push(index);
        high.push(end);
        depth.push(at + 1);
        count++;
        index = end;
      }
      this.childCount[state] = count - this.firstChild[state]!;
    }
    this.characterCount = count - 1;
    // Breadth first, so each state's failure (its longest proper suffix in the trie) is final before its children's.
    for (let state = 0; state < count; state++) {
      const first = this.firstChild[state]!;
      for (let child = first; child < first + this.childCount[state]!; child++) {
        if (state === 0) continue;
        const code = this.edgeCode[child]!;
        let fallback = this.failure[state]!;
        let target = this.step(fallback, code);
        while (target < 0 && fallback !== 0) {
          fallback = this.failure[fallback]!;
          target = this.step(fallback, code);
        }
        this.failure[child] = target < 0 ? 0 : target;
        // A shorter string may end here though the path's own does not.
        if (this.longestEnding[child] === 0) this.longestEnding[child] = this.longestEnding[this.failure[child]!]!;
      }
    }
  }

  /** The child of `state` on `code`, or -1. */
  private step(state: number, code: number): number {
    let lowest = this.firstChild[state]!;
    let highest = lowest + this.childCount[state]! - 1;
    while (lowest <= highest) {
      const middle = (lowest + highest) >>> 1;
      const found = this.edgeCode[middle]!;
      if (found === code) return middle;
      if (found < code) lowest = middle + 1;
      else highest = middle - 1;
    }
    return -1;
  }

  /**
   * Marks in `covered` (a difference array of `text.length + 1` entries) every range of
   * `text` that some registered string occupies. Returns the transitions taken, at most
   * twice the text's length (each failure step undoes a step forward).
   */
  cover(text: string, covered: Int32Array): number {
    let state = 0;
    let steps = 0;
    // The ranges found so far that may still grow leftwards, merged: [start, end) pairs.
    let openStart = -1;
    let openEnd = -1;
    for (let index = 0; index < text.length; index++) {
      const code = text.charCodeAt(index);
      let target = this.step(state, code);
      steps++;
      while (target < 0 && state !== 0) {
        state = this.failure[state]!;
        target = this.step(state, code);
        steps++;
      }
      state = target < 0 ? 0 : target;
      const length = this.longestEnding[state]!;
      if (length === 0) continue;
      const start = index + 1 - length;
      if (openEnd >= 0 && start <= openEnd) {
        openStart = Math.min(openStart, start);
        openEnd = index + 1;
      } else {
        if (openEnd >= 0) {
          covered[openStart]!++;
          covered[openEnd]!--;
        }
        openStart = start;
        openEnd = index + 1;
      }
    }
    if (openEnd >= 0) {
      covered[openStart]!++;
      covered[openEnd]!--;
    }
    return steps;
  }
}
