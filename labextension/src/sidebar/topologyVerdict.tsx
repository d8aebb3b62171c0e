import * as React from 'react';

import { problemLines } from '../problemText';
import type { TopologyModel } from '../topologyModel';

/**
 * The server's verdict under the form: the valid topology's headline, or every problem, once
 * each, in the form's words ("worker 1 index: ..."), one per line, wrapped to the pane.
 */
export function TopologyVerdict(props: {
  model: TopologyModel;
}): JSX.Element | null {
  const validation = props.model.validation;
  if (!validation) {
    return null;
  }
  if (validation.valid) {
    const headline = (validation.summary ?? '').split('\n')[0];
    return <div className="jp-px-verdict jp-px-valid">✓ {headline}</div>;
  }
  const lines = problemLines(validation.problems ?? [], props.model.formData);
  if (!lines.length) {
    return (
      <div className="jp-px-verdict jp-px-invalid">{validation.message}</div>
    );
  }
  return (
    <div className="jp-px-verdict jp-px-invalid">
      {`${lines.length} problem${lines.length === 1 ? '' : 's'}:`}
      <ul className="jp-px-problems">
        {lines.map(line => (
          <li key={line}>{line}</li>
        ))}
      </ul>
    </div>
  );
}
