import { nextMessage, ofType, startNode, type NodeChild } from './children.ts';
import type { ReceiverCommand, ReceiverMessage } from './receiver.ts';

/** The webhook receiver (support/receiver.ts) in a child process, and how to talk to it. */
export interface Receiver {
  child: NodeChild;
  url: string;
  command(c: ReceiverCommand): void;
  stats(): Promise<Extract<ReceiverMessage, { type: 'stats' }>>;
}

export async function startReceiver(): Promise<Receiver> {
  const child = startNode(['scripts/bench/support/receiver.ts'], { ipc: true });
  const { port } = await nextMessage(child, ofType<ReceiverMessage, 'listening'>('listening'));
  const command = (c: ReceiverCommand) => child.proc.send(c);
  return {
    child,
    url: `http://127.0.0.1:${port}`,
    command,
    stats() {
      const reply = nextMessage(child, ofType<ReceiverMessage, 'stats'>('stats'));
      command({ type: 'stats' });
      return reply;
    },
  };
}
