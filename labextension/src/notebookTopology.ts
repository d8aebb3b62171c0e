/**
 * The topology a notebook declares for itself: a `%%px_topology [NAME]` cell (its body is a
 * polyaxonfile). The sidebar's form loads it when the notebook opens, so the form and the
 * notebook agree without a trip through the kernel.
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
}

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
 * `null`): the one the first `%%px_distributed -t NAME` cell uses when a cell defines it, else
 * the first `%%px_topology` cell; null when there is none.
 */
export function notebookTopology(
  sources: (string | null)[]
): INotebookTopology | null {
  const found: INotebookTopology[] = [];
  let wanted: string | null = null;
  sources.forEach((source, index) => {
    if (source === null) {
      return;
    }
    const text = source.replace(/^\s*\n/, '');
    const topology = text.match(TOPOLOGY_CELL);
    if (topology) {
      found.push({
        name: topologyName(topology[1]),
        yaml: text.slice(topology[0].length),
        cell: index + 1
      });
      return;
    }
    const distributed = text.match(DISTRIBUTED_CELL);
    if (distributed && wanted === null) {
      wanted = usedTopology(distributed[1]);
    }
  });
  return (
    found.find(t => wanted !== null && t.name === wanted) ?? found[0] ?? null
  );
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
  return `from ${base}, cell ${topology.cell} (${magic})`;
}
