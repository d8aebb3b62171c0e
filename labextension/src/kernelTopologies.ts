/**
 * Named topologies shared with `%%px_topology NAME`: they live in the notebook's kernel
 * (`jupyter_px.topology.registry.topologies`), so the sidebar reads and writes them there with
 * silent executions. Values cross the kernel boundary as base64 of JSON (never code built from
 * user text: a name is checked against the registry's own rule before it is used).
 */
import type { Kernel, KernelMessage } from '@jupyterlab/services';

/** The registry's rule for a name (jupyter_px/topology/registry.py). */
export const NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/;

const REGISTRY =
  "__import__('jupyter_px.topology.registry', fromlist=['topologies']).topologies";
const TOPOLOGY =
  "__import__('jupyter_px.topology', fromlist=['to_dict', 'parse_topology'])";

/** A Python expression whose value is base64(JSON {name: topology}) of every named topology. */
export function listExpression(): string {
  return (
    "__import__('base64').b64encode(__import__('json').dumps(" +
    `{n: ${TOPOLOGY}.to_dict(${REGISTRY}.get(n)) for n in ${REGISTRY}.names()}` +
    ').encode()).decode()'
  );
}

/** Decode the `text/plain` value of `listExpression()` ('base64...', with Python's quotes). */
export function decodeList(textPlain: string): { [name: string]: any } {
  const body = textPlain.trim().replace(/^'|'$/g, '');
  if (!/^[A-Za-z0-9+/=]*$/.test(body)) {
    throw new Error(
      `unexpected reply from the kernel: ${textPlain.slice(0, 80)}`
    );
  }
  const bytes = Uint8Array.from(atob(body), c => c.charCodeAt(0));
  return JSON.parse(new TextDecoder().decode(bytes));
}

/** Code that saves `topology` under `name` in the kernel's registry (and makes it current). */
export function saveCode(name: string, topology: object): string {
  if (!NAME_PATTERN.test(name)) {
    throw new Error(
      `topology name ${JSON.stringify(name)} is not valid: use letters, digits, '_', '-' or '.', starting with a letter`
    );
  }
  const bytes = new TextEncoder().encode(JSON.stringify(topology));
  const encoded = btoa(String.fromCharCode(...bytes));
  return (
    `${REGISTRY}.put('${name}', ${TOPOLOGY}.parse_topology(` +
    `__import__('json').loads(__import__('base64').b64decode('${encoded}'))))`
  );
}

async function execute(
  kernel: Kernel.IKernelConnection,
  code: string,
  expressions: { [key: string]: string } = {}
): Promise<KernelMessage.IExecuteReplyMsg['content']> {
  const future = kernel.requestExecute({
    code,
    silent: true,
    store_history: false,
    user_expressions: expressions,
    allow_stdin: false
  });
  const reply = await future.done;
  return reply.content;
}

/** {name: topology} of the kernel's named topologies ({} when jupyter_px is not imported there). */
export async function listNamed(
  kernel: Kernel.IKernelConnection
): Promise<{ [name: string]: any }> {
  const content: any = await execute(kernel, '', { px: listExpression() });
  const value = content?.user_expressions?.px;
  if (!value || value.status !== 'ok') {
    throw new Error(
      value?.evalue || 'the kernel could not list its topologies'
    );
  }
  return decodeList(value.data['text/plain']);
}

export async function saveNamed(
  kernel: Kernel.IKernelConnection,
  name: string,
  topology: object
): Promise<void> {
  const content: any = await execute(kernel, saveCode(name, topology));
  if (content.status !== 'ok') {
    throw new Error(`${content.ename}: ${content.evalue}`);
  }
}
