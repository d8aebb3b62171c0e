/**
 * The topology a notebook declares for itself: a `%%px_topology [NAME]` cell (its body is a
 * polyaxonfile), the one its `%%px_distributed` cell would run with. The sidebar's form loads
 * it when the notebook opens, so the form and the notebook agree without a trip through the
 * kernel, and says which cell it took and whether it is a sweep.
 */

const TOPOLOGY_CELL = /^\s*%%px_topology\b[ \t]*([^\n]*)\n?/;
const DISTRIBUTED_CELL = /^\s*%%px_distributed\b([^\n]*)/;

/** A `%%px_topology` cell found in a notebook. */
export interface INotebookTopology {
  /** The name it is saved under (`%%px_topology NAME`), or null. */
  name: string | null;
  /** Its body: polyaxonfile YAML. */
  yaml: string;
  /** The cell's position among all cells, counted from 1 as the user sees it. */
  cell: number;
  /** It has a sweep section (`hptuning:` or `matrix:`): `%%px_distributed` starts a sweep. */
  sweep: boolean;
}

/** A polyaxonfile's sweep section, at the top level. */
const SWEEP_SECTION = /^(hptuning|matrix):/m;

function topologyName(options: string): string | null {
  const words = options.trim().split(/\s+/).filter(Boolean);
  const positional = words.find(word => !word.startsWith('-'));
  return positional ?? null;
}

function usedTopology(options: string): string | null {
  const match = options.match(/(?:^|\s)(?:-t|--topology)(?:\s+|=)(\S+)/);
  return match ? match[1] : null;
}

/**
 * The topology of a notebook's cells (`sources`: every cell's text, code cells or not as
 * `null`), the one the notebook's code would run with, as the magics choose it: the first
 * `%%px_distributed` cell's `-t NAME` (the last cell defining NAME above it, else any), or
 * without `-t` the current one then: the last `%%px_topology` cell above it. Without a
 * `%%px_distributed` cell, the last `%%px_topology` cell (what one added at the end would use).
 * Null when there is none.
 */
export function notebookTopology(
  sources: (string | null)[]
): INotebookTopology | null {
  const found: INotebookTopology[] = [];
  let firstRun: { cell: number; wanted: string | null } | null = null;
  sources.forEach((source, index) => {
    if (source === null) {
      return;
    }
    const text = source.replace(/^\s*\n/, '');
    const topology = text.match(TOPOLOGY_CELL);
    if (topology) {
      const yaml = text.slice(topology[0].length);
      found.push({
        name: topologyName(topology[1]),
        yaml,
        cell: index + 1,
        sweep: SWEEP_SECTION.test(yaml)
      });
      return;
    }
    const distributed = text.match(DISTRIBUTED_CELL);
    if (distributed && firstRun === null) {
      firstRun = { cell: index + 1, wanted: usedTopology(distributed[1]) };
    }
  });
  const run = firstRun as { cell: number; wanted: string | null } | null;
  const above = run ? found.filter(t => t.cell < run.cell) : found;
  if (run?.wanted) {
    const named = (list: INotebookTopology[]) =>
      list.filter(t => t.name === run.wanted);
    return named(above).pop() ?? named(found).pop() ?? above.pop() ?? null;
  }
  return above.pop() ?? found[0] ?? null;
}

/** The loaded-from line: where the form's topology came from, in the user's words. */
export function loadedFromLine(
  notebook: string,
  topology: INotebookTopology
): string {
  const base = notebook.split('/').pop() ?? notebook;
  const magic = topology.name
    ? `%%px_topology ${topology.name}`
    : '%%px_topology';
  const sweep = topology.sweep
    ? ', a sweep: each trial runs this topology'
    : '';
  return `from ${base}, cell ${topology.cell} (${magic}${sweep})`;
}
