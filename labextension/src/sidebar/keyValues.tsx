import * as React from 'react';

type Pairs = { [key: string]: string };

/** `KEY=value` lines -> pairs, or the first line that is not one (1-based). */
export function parsePairs(text: string): { pairs: Pairs } | { bad: number } {
  const pairs: Pairs = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (!line) {
      continue;
    }
    const at = line.indexOf('=');
    if (at <= 0) {
      return { bad: i + 1 };
    }
    pairs[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return { pairs };
}

export function formatPairs(pairs: Pairs | null | undefined): string {
  return Object.entries(pairs ?? {})
    .map(([key, value]) => `${key}=${value}`)
    .join('\n');
}

/**
 * A set of names and values (environment variables, node selectors) as `KEY=value` lines: every
 * replica gets them. A line that is not `KEY=value` is named and nothing changes until it is.
 */
export function KeyValues(props: {
  id: string;
  label: string;
  placeholder: string;
  value: Pairs | null | undefined;
  onChange: (pairs: Pairs | undefined) => void;
}): JSX.Element {
  const { id, label, placeholder, value, onChange } = props;
  const [text, setText] = React.useState(() => formatPairs(value));
  const [bad, setBad] = React.useState<number | null>(null);
  // Follow the data when it changes elsewhere (an import, another notebook's topology).
  const shown = formatPairs(value);
  const parsed = parsePairs(text);
  React.useEffect(() => {
    if (!('pairs' in parsed) || formatPairs(parsed.pairs) !== shown) {
      if (bad === null) {
        setText(shown);
      }
    }
  }, [shown]);
  return (
    <label className="jp-px-key-values" htmlFor={id}>
      <span>{label}</span>
      <textarea
        id={id}
        className="jp-mod-styled"
        rows={3}
        spellCheck={false}
        placeholder={placeholder}
        value={text}
        onChange={event => {
          setText(event.target.value);
          const result = parsePairs(event.target.value);
          if ('bad' in result) {
            setBad(result.bad);
            return;
          }
          setBad(null);
          onChange(Object.keys(result.pairs).length ? result.pairs : undefined);
        }}
      />
      {bad !== null && (
        <span id={`${id}__error`} className="jp-px-field-error">
          line {bad}: write KEY=value
        </span>
      )}
    </label>
  );
}
