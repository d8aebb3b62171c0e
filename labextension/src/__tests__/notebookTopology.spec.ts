import { loadedFromLine, notebookTopology } from '../notebookTopology';

// quickstart.ipynb's cells: markdown (null) and code, in order.
const QUICKSTART = [
  null,
  '%load_ext jupyter_px',
  null,
  '%%px_topology quick\nframework: pytorch\nenvironment:\n  replicas:\n    n_workers: 2',
  null,
  '%%px_distributed -t quick --name quickstart --wait -o run\nimport torch',
  '%px_status {run.run_id}'
];

describe('notebookTopology', () => {
  it("finds the quickstart's %%px_topology cell, its name and its position", () => {
    const found = notebookTopology(QUICKSTART);
    expect(found).toEqual({
      name: 'quick',
      yaml: 'framework: pytorch\nenvironment:\n  replicas:\n    n_workers: 2',
      cell: 4,
      sweep: false
    });
    expect(loadedFromLine('notebooks/quickstart.ipynb', found!)).toBe(
      'from quickstart.ipynb, cell 4 (%%px_topology quick)'
    );
  });

  it('prefers the topology the first %%px_distributed cell uses', () => {
    const found = notebookTopology([
      '%%px_topology small\nframework: pytorch',
      '%%px_topology big\nframework: tensorflow',
      '%%px_distributed --topology=big\nprint(1)'
    ]);
    expect(found?.name).toBe('big');
    expect(found?.cell).toBe(2);
  });

  it('takes the one %%px_distributed would run with: the last defined above it', () => {
    // three replicas defined, the training cell, then a sweep topology further down
    const sources = [
      '%%px_topology\nframework: pytorch\nenvironment:\n  replicas:\n    n_workers: 1',
      '%%px_topology\nframework: pytorch\nenvironment:\n  replicas:\n    n_workers: 2',
      '%%px_distributed --wait\nprint(1)',
      '%%px_topology sw\nframework: pytorch\nhptuning:\n  matrix:\n    lr: {values: [0.1, 0.2]}'
    ];
    const found = notebookTopology(sources)!;
    expect([found.cell, found.sweep]).toEqual([2, false]);
    expect(found.yaml).toContain('n_workers: 2');
    // no training cell yet: the last one, said to be a sweep
    const sweep = notebookTopology([sources[0], sources[3]])!;
    expect([sweep.cell, sweep.sweep]).toEqual([2, true]);
    expect(loadedFromLine('a/b.ipynb', sweep)).toBe(
      'from b.ipynb, cell 2 (%%px_topology sw, a sweep: each trial runs this topology)'
    );
  });

  it('takes an unnamed one, and none when there is none', () => {
    expect(
      notebookTopology(['print(1)', '\n%%px_topology\nframework: mxnet'])
    ).toEqual({ name: null, yaml: 'framework: mxnet', cell: 2, sweep: false });
    expect(notebookTopology(['print("%%px_topology x")', null])).toBeNull();
    expect(notebookTopology([])).toBeNull();
  });
});
