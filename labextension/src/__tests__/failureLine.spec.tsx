import * as React from 'react';

import * as api from '../api';
import { exceptionLine } from '../failureLine';
import { RunRow } from '../sidebar/runRow';
import type { IReplica } from '../types';
import { summary } from './fixtures';
import { actions, mount } from './render';

jest.mock('../api');
const getRun = api.getRun as jest.MockedFunction<typeof api.getRun>;
const readLog = api.readLog as jest.MockedFunction<typeof api.readLog>;

const TRACEBACK = [
  'rank 1 starting',
  'Traceback (most recent call last):',
  '  File "main.py", line 3, in <module>',
  '    1 / 0',
  'ZeroDivisionError: division by zero',
  ''
].join('\n');

describe('exceptionLine', () => {
  it("is the traceback's last line", () => {
    expect(exceptionLine(TRACEBACK)).toBe(
      'ZeroDivisionError: division by zero'
    );
    expect(
      exceptionLine(
        'torch.distributed.DistBackendError: NCCL error\n[W] process group destroyed\n'
      )
    ).toBe('torch.distributed.DistBackendError: NCCL error');
  });

  it('else the last line of output, progress bars read at their end', () => {
    expect(exceptionLine('step 1\rstep 2\rkilled\n\n')).toBe('killed');
    expect(exceptionLine('')).toBe('');
  });
});

describe('RunRow of a failed run', () => {
  it("shows the failing replica's exception line", async () => {
    const replica = (role: string, index: number, state: string): IReplica => ({
      key: `${role}-${index}`,
      role,
      index,
      state,
      exit_code: state === 'Failed' ? 1 : 0,
      signal: null,
      restarts: 0,
      reason: null,
      message: null,
      started_at: 1,
      finished_at: 2,
      address: null
    });
    const run = summary({ run_id: 'run-f', state: 'Failed', finished: true });
    getRun.mockResolvedValue({
      ...run,
      replicas: [
        replica('master', 0, 'Succeeded'),
        replica('worker', 1, 'Failed')
      ],
      topology: {},
      code: {
        entrypoint: 'main.py',
        language: 'python',
        args: [],
        source: null,
        pushed: []
      },
      workdir: null,
      host: null
    });
    readLog
      .mockResolvedValueOnce({
        replica: 'worker-1',
        text: TRACEBACK,
        offset: 100,
        finished: true
      })
      .mockResolvedValueOnce({
        replica: 'worker-1',
        text: '',
        offset: 100,
        finished: true
      });

    const widget = mount(
      <RunRow run={run} progress={null} actions={actions()} />
    );
    await React.act(async () => {
      await new Promise(resolve => setTimeout(resolve, 0));
    });
    expect(readLog).toHaveBeenCalledWith('run-f', 'worker', 1, 0);
    expect(widget.node.querySelector('.jp-px-run-failure')?.textContent).toBe(
      'worker-1: ZeroDivisionError: division by zero'
    );
    React.act(() => widget.dispose());
  });
});
