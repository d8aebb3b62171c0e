import * as React from 'react';

import type { TopologyModel } from '../topologyModel';

/** The server's verdict under the form: the valid topology's headline, or every problem. */
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
  const problems = validation.problems ?? [];
  return (
    <div className="jp-px-verdict jp-px-invalid">
      {problems.length
        ? `${problems.length} problem${problems.length === 1 ? '' : 's'}: ` +
          problems
            .map(p => (p.path ? `${p.path}: ${p.message}` : p.message))
            .join('; ')
        : validation.message}
    </div>
  );
}
