import { SecretAutomaton } from './secret-automaton.ts';

export { SecretAutomaton } from './secret-automaton.ts';

/** What replaces each masked range. */
export const MASK = '***';
/** Shorter strings are not masked: masking every "a" would say more than it hides. */
export const MIN_MASKED_CHARS = 4;

export interface MaskLimits {
  /** Distinct strings one mask holds at most (each value, and each line of a multi-line one). */
  maxStrings: number;
  /** Their characters, summed. */
  maxCharacters: number;
}

/**
 * Per attempt, the bound on what is masked: a binding with a PEM key and a few tokens is a
 * few hundred strings; twenty 64 KiB secrets of 4-character lines (the attack of issue 68)
 * are 262,140, and are refused rather than built.
 */
export const DEFAULT_MASK_LIMITS: MaskLimits = { maxStrings: 4096, maxCharacters: 256 * 1024 };

/** Registering more than a mask's limits: the resolution that asked for it fails, with this message. */
export class MaskLimitError extends Error {
  constructor(readonly limits: MaskLimits, strings: number, characters: number) {
    super(
      `the secrets resolved would be ${strings} strings of ${characters} characters to mask (each value, and each line of a multi-line one); ` +
        `an attempt masks at most ${limits.maxStrings} strings of ${limits.maxCharacters} characters`,
    );
    this.name = 'MaskLimitError';
  }
}

/** The strings a value gives to mask: the value (JSON for a non-string), and each of its lines, trimmed, long enough to mask. */
export function maskedStringsOf(value: unknown): string[] {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  if (text === undefined) return [];
  return [text, ...text.split(/\r?\n/)].map((part) => part.trim()).filter((part) => part.length >= MIN_MASKED_CHARS);
}

/**
 * Secret values registered over an attempt, and masking of any text in time linear in its
 * length whatever their number. Strings arrive in batches (one per resolution); each batch
 * is an automaton of its own, and two automata of similar size are merged into one, so
 * registering N strings builds O(N log N) characters in all and a text is scanned by at
 * most log2(N) automata, never rebuilt per batch (which a tenant rotating a secret between
 * resolutions could make quadratic).
 */
export class SecretMask {
  private readonly known = new Set<string>();
  private characters = 0;
  private longest = 0;
  /** Oldest (largest) first; each holds its strings for a merge. */
  private levels: { strings: string[]; automaton: SecretAutomaton }[] = [];
  /** Transitions taken by the last `mask` call, summed over automata (for the linearity test). */
  lastScanSteps = 0;

  constructor(private readonly limits: MaskLimits = DEFAULT_MASK_LIMITS) {}

  get size(): { strings: number; characters: number; automata: number } {
    return { strings: this.known.size, characters: this.characters, automata: this.levels.length };
  }

  /**
   * Registers each value to mask from now on. All or nothing: past the limits nothing of
   * the batch is registered and a MaskLimitError is thrown, before anyone has the values.
   */
  register(values: readonly unknown[]): void {
    const added = [...new Set(values.flatMap(maskedStringsOf))].filter((text) => !this.known.has(text));
    if (added.length === 0) return;
    const characters = added.reduce((sum, text) => sum + text.length, 0);
    if (this.known.size + added.length > this.limits.maxStrings || this.characters + characters > this.limits.maxCharacters) {
      throw new MaskLimitError(this.limits, this.known.size + added.length, this.characters + characters);
    }
    for (const text of added) {
      this.known.add(text);
      this.longest = Math.max(this.longest, text.length);
    }
    this.characters += characters;
    let level = added;
    while (this.levels.length > 0 && this.levels.at(-1)!.strings.length <= level.length) level = [...this.levels.pop()!.strings, ...level];
    this.levels.push({ strings: level, automaton: new SecretAutomaton(level) });
  }

  /**
   * The first `maxChars` code units of `text` masked, reading only as far as a secret that
   * starts within them can reach (a line of megabytes costs what its kept head costs), and
   * whether anything was cut.
   */
  maskHead(text: string, maxChars: number): { text: string; cut: boolean } {
    const read = text.length > maxChars + this.longest ? text.slice(0, maxChars + this.longest) : text;
    const masked = this.mask(read);
    return masked.length > maxChars || read.length < text.length ? { text: masked.slice(0, maxChars), cut: true } : { text: masked, cut: false };
  }

  /** `text` with every range that a registered string occupies replaced by MASK (overlapping ranges as one). */
  mask(text: string): string {
    this.lastScanSteps = 0;
    if (this.levels.length === 0 || text.length < MIN_MASKED_CHARS) return text;
    const covered = new Int32Array(text.length + 1);
    for (const { automaton } of this.levels) this.lastScanSteps += automaton.cover(text, covered);
    let masked = '';
    let depth = 0;
    let kept = 0;
    for (let index = 0; index <= text.length; index++) {
      const before = depth;
      depth += covered[index]!;
      if (before === 0 && depth > 0) {
        masked += text.slice(kept, index) + MASK;
      } else if (before > 0 && depth === 0) {
        kept = index;
      }
    }
    return kept === 0 && masked === '' ? text : masked + text.slice(kept);
  }
}
