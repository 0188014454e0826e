import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../../lib/index.js';
import { createTestGateway } from '../../helpers/gateway.js';
import { memoryLogger } from '../../helpers/memory-logger.js';
import { wrapStore } from '../../helpers/store-wrapper.js';

/**
 * Issue 47: decisions of an in-process `backchannel.authorize` do not survive a restart (the request does, in a
 * shared store): with a shared store the gateway says so at start-up, naming the restart-safe way.
 */
describe('backchannel.authorize with a shared store', () => {
  const authorize = () => Promise.resolve('approve' as const);
  const warned = (store: MemoryStore | ReturnType<typeof wrapStore>, hook: boolean) => {
    const log = memoryLogger();
    createTestGateway({ store, logger: log.logger, ...(hook ? { backchannel: { authorize } } : {}) });
    return log.lines().filter((line) => line.option === 'backchannel.authorize');
  };

  it('warns at start-up that pending decisions are lost on a restart, naming backchannel.approve', () => {
    const lines = warned(wrapStore(new MemoryStore()), true);
    expect(lines).toHaveLength(1);
    expect(lines[0]!.msg).toContain('netauth.backchannel.approve()');
  });

  it('says nothing with the memory store (a restart loses the requests too) or without the hook', () => {
    expect(warned(new MemoryStore(), true)).toEqual([]);
    expect(warned(wrapStore(new MemoryStore()), false)).toEqual([]);
  });
});
