import { didYouMean } from '@envengine/name-suggestions';

/**
 * ` Did you mean "cities"?` for a mistyped name of the manifest, or ''. Names of five
 * characters or more may be two edits off (`citys`, `scrach`): authors type whole words
 * here, where envctl's own flags and commands are short.
 */
export function suggestionFor(word: string, candidates: Iterable<string>): string {
  return didYouMean(word, candidates, { atLeast: word.length >= 5 ? 2 : 1 });
}
