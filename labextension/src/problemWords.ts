/**
 * A topology problem's message in the words the form uses, for its lines and beside its fields.
 */
/** The server's bound words as a person says them: "-2 is not >= 0" is "at least 0". */
const BOUNDS: [RegExp, (bound: string) => string][] = [
  [/^.* is not >= (.+)$/, bound => `at least ${bound}`],
  [/^.* is not > (.+)$/, bound => `more than ${bound}`],
  [/^.* is not < (.+)$/, bound => `less than ${bound}`],
  [/^.* is above the maximum \((.+)\)$/, bound => `at most ${bound}`]
];

/** A problem's message in the form's words (a bound said as one; anything else as it is). */
export function problemMessage(message: string): string {
  for (const [pattern, say] of BOUNDS) {
    const match = pattern.exec(message);
    if (match) {
      return say(match[1]);
    }
  }
  return message;
}
