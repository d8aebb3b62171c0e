/**
 * The line that says why a run failed, for its card in the runs list: the exception's last line
 * ("ZeroDivisionError: division by zero") from the failing replica's log, as a Python user would
 * look for it at the bottom of the traceback.
 */
import * as api from './api';
import { replicaName, replicaToOpen } from './replicas';

/** Chunks read at most to reach a log's end (the server sends up to 256 KiB a chunk). */
const MAX_CHUNKS = 16;
/** An exception line: `ValueError: ...`, `torch.distributed.DistBackendError: ...`, `KeyboardInterrupt`. */
const EXCEPTION =
  /^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b(:.*)?$/;

/** The exception line of a log: the last line that reads as one, else its last line of output. */
export function exceptionLine(text: string): string {
  const lines = text
    .split('\n')
    .map(line => (line.split('\r').pop() ?? '').trim())
    .filter(line => line && !line.startsWith('--- restart'));
  for (let i = lines.length - 1; i >= 0; i--) {
    if (EXCEPTION.test(lines[i])) {
      return lines[i];
    }
  }
  return lines[lines.length - 1] ?? '';
}

const cache = new Map<string, Promise<string>>();

/** The failing replica's exception line for a finished, failed run (read once per run). */
export function failureLine(runId: string): Promise<string> {
  let line = cache.get(runId);
  if (!line) {
    line = readFailureLine(runId);
    cache.set(runId, line);
    line.catch(() => cache.delete(runId));
  }
  return line;
}

async function readFailureLine(runId: string): Promise<string> {
  const run = await api.getRun(runId);
  if (!run.replicas.length) {
    return '';
  }
  const replica = run.replicas[replicaToOpen(run.replicas)];
  let offset = 0;
  let tail = '';
  for (let i = 0; i < MAX_CHUNKS; i++) {
    const chunk = await api.readLog(runId, replica.role, replica.index, offset);
    tail = (tail + chunk.text).slice(-8192);
    if (chunk.offset === offset) {
      break;
    }
    offset = chunk.offset;
  }
  const line = exceptionLine(tail);
  return line ? `${replicaName(replica)}: ${line}` : '';
}
