/**
 * "Did you mean": the known name closest to a mistyped one, for envctl's commands and flags
 * and the services' unknown jobs, assets and environments.
 */

/**
 * Edits between two strings (Damerau–Levenshtein, optimal string alignment): an insertion,
 * a deletion, a substitution or a swap of two neighbours each count one, so `refesh` is 1
 * from `refresh` and `lsit` 1 from `list`.
 */
export function editDistance(left: string, right: string): number {
  const rows = left.length + 1;
  const columns = right.length + 1;
  const distance: number[][] = Array.from({ length: rows }, (_, row) => Array.from({ length: columns }, (_, column) => (row === 0 ? column : column === 0 ? row : 0)));
  for (let row = 1; row < rows; row += 1) {
    for (let column = 1; column < columns; column += 1) {
      const cost = left[row - 1] === right[column - 1] ? 0 : 1;
      let best = Math.min(distance[row - 1]![column]! + 1, distance[row]![column - 1]! + 1, distance[row - 1]![column - 1]! + cost);
      if (row > 1 && column > 1 && left[row - 1] === right[column - 2] && left[row - 2] === right[column - 1]) {
        best = Math.min(best, distance[row - 2]![column - 2]! + 1);
      }
      distance[row]![column] = best;
    }
  }
  return distance[left.length]![right.length]!;
}

/** Names past this length are not compared (a pasted token, a path): a suggestion is for typos. */
const LONGEST_COMPARED = 100;

/** How far a suggestion may be: `atLeast` edits allowed however short the word (default 1). */
export interface SuggestionReach {
  atLeast?: number;
}

/**
 * The candidate closest to `word`, when it is close enough to be a typo of it: at most a
 * third of the word's length in edits (at least one), case ignored; ties go to the first
 * candidate. Undefined when none is, or `word` is itself a candidate.
 */
export function closestName(word: string, candidates: Iterable<string>, { atLeast = 1 }: SuggestionReach = {}): string | undefined {
  if (word.length === 0 || word.length > LONGEST_COMPARED) return undefined;
  const allowed = Math.max(atLeast, Math.floor(word.length / 3));
  const lower = word.toLowerCase();
  let best: { name: string; distance: number } | undefined;
  for (const candidate of candidates) {
    if (candidate === word) return undefined;
    if (candidate.length > LONGEST_COMPARED || Math.abs(candidate.length - word.length) > allowed) continue;
    const distance = editDistance(lower, candidate.toLowerCase());
    if (distance <= allowed && (best === undefined || distance < best.distance)) best = { name: candidate, distance };
  }
  return best?.name;
}

/** ` Did you mean "refresh"?` (with its leading space), or '' when nothing is close. */
export function didYouMean(word: string, candidates: Iterable<string>, reach: SuggestionReach = {}): string {
  const closest = closestName(word, candidates, reach);
  return closest === undefined ? '' : ` Did you mean "${closest}"?`;
}
