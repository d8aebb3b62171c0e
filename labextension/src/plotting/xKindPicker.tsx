import * as React from 'react';

import type { XKind } from './figures';

/** A metrics plot's x axis picker: the step, the time since the run started, or the wall time. */
export function XKindPicker(props: {
  value: XKind;
  onChange: (kind: XKind) => void;
}): JSX.Element {
  return (
    <label>
      x{' '}
      <select
        className="jp-mod-styled jp-px-x-select"
        value={props.value}
        onChange={event => props.onChange(event.target.value as XKind)}
      >
        <option value="step">step</option>
        <option value="relative">relative time</option>
        <option value="wall">wall time</option>
      </select>
    </label>
  );
}
