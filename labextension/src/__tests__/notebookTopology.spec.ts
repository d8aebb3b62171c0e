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
      cell: 4
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

  it('takes the first unnamed one, and none when there is none', () => {
    expect(
      notebookTopology(['print(1)', '\n%%px_topology\nframework: mxnet'])
    ).toEqual({ name: null, yaml: 'framework: mxnet', cell: 2 });
    expect(notebookTopology(['print("%%px_topology x")', null])).toBeNull();
    expect(notebookTopology([])).toBeNull();
  });
});
