/**
 * The WebUI's command bus (webui/src/lib/commands.ts): the desktop's menu, tray and notification
 * commands are parsed (anything else dropped), wait for the app's handler when they come early,
 * and act on the router store (open a conversation, a new chat, Settings), not on buttons.
 */
import { describe, expect, it } from 'vitest';
import { CommandBus, commandHandler, parseDesktopCommand, type AppCommand } from '../../webui/src/lib/commands.js';

describe('desktop commands', () => {
  it('parses the wire form and drops anything else', () => {
    expect(parseDesktopCommand('new-chat')).toEqual({ type: 'new-chat' });
    expect(parseDesktopCommand('settings')).toEqual({ type: 'settings' });
    expect(parseDesktopCommand('open:c_123-x')).toEqual({ type: 'open-conversation', conversationId: 'c_123-x' });
    for (const bad of ['open:', 'open:"]<script>', `open:${'a'.repeat(129)}`, 'quit', 42, null, { type: 'settings' }]) expect(parseDesktopCommand(bad)).toBeNull();
  });

  it('runs commands on the handler; early ones wait (the latest of each kind), in order', () => {
    const bus = new CommandBus();
    bus.dispatch({ type: 'open-conversation', conversationId: 'a' });
    bus.dispatch({ type: 'settings' });
    bus.dispatch({ type: 'open-conversation', conversationId: 'b' });
    const seen: AppCommand[] = [];
    const off = bus.handle((c) => void seen.push(c));
    expect(seen).toEqual([{ type: 'open-conversation', conversationId: 'b' }, { type: 'settings' }]);
    bus.dispatch({ type: 'new-chat' });
    expect(seen.at(-1)).toEqual({ type: 'new-chat' });
    off();
    bus.dispatch({ type: 'settings' });
    expect(seen).toHaveLength(3);
    // A handler that throws does not break the bus.
    bus.handle(() => {
      throw new Error('boom');
    });
    expect(() => bus.dispatch({ type: 'new-chat' })).not.toThrow();
  });

  it('acts on the router store', () => {
    const calls: string[] = [];
    const handle = commandHandler({ open: (id) => void calls.push(`open:${id}`), showSettings: (show) => void calls.push(`settings:${show}`) });
    handle({ type: 'new-chat' });
    handle({ type: 'settings' });
    handle({ type: 'open-conversation', conversationId: 'c1' });
    expect(calls).toEqual(['open:null', 'settings:true', 'open:c1']);
  });
});
