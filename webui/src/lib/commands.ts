/**
 * App commands that come from outside the page (the desktop app's menu, tray and notifications):
 * a small bus the transport feeds and the app handles at the store/router level (main.ts), so
 * a command does what the store does, never what a button happens to be on screen. A command
 * that comes before the app registered its handler (a notification clicked while the window was
 * loading) waits for it; only the latest of each kind is kept.
 */

export type AppCommand = { type: 'new-chat' } | { type: 'settings' } | { type: 'open-conversation'; conversationId: string };

export type CommandHandler = (command: AppCommand) => void;

const CONVERSATION_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** The desktop's wire form (hosts/desktop/contract.ts `DesktopCommand`), checked; null when it is not one. */
export function parseDesktopCommand(raw: unknown): AppCommand | null {
  if (raw === 'new-chat') return { type: 'new-chat' };
  if (raw === 'settings') return { type: 'settings' };
  if (typeof raw === 'string' && raw.startsWith('open:')) {
    const id = raw.slice(5);
    return CONVERSATION_ID.test(id) ? { type: 'open-conversation', conversationId: id } : null;
  }
  return null;
}

export class CommandBus {
  private handler: CommandHandler | null = null;
  private waiting = new Map<AppCommand['type'], AppCommand>();

  /** Run a command now, or when a handler registers. */
  dispatch(command: AppCommand): void {
    if (!this.handler) return void this.waiting.set(command.type, command);
    try {
      this.handler(command);
    } catch (err) {
      console.error(`the ${command.type} command failed`, err);
    }
  }

  /** The app's one handler; commands that waited run now, in the order they first came. Returns the unsubscribe. */
  handle(fn: CommandHandler): () => void {
    this.handler = fn;
    const waiting = [...this.waiting.values()];
    this.waiting.clear();
    for (const c of waiting) this.dispatch(c);
    return () => {
      if (this.handler === fn) this.handler = null;
    };
  }
}

/** The page's bus. */
export const commands = new CommandBus();

/** The stores a command acts on (the conversations store is the app's router). */
export interface CommandTargets {
  open(conversationId: string | null): void;
  showSettings(show?: boolean): void;
}

/** What each command does, in store terms. */
export function commandHandler(targets: CommandTargets): CommandHandler {
  return (c) => {
    if (c.type === 'new-chat') targets.open(null);
    else if (c.type === 'settings') targets.showSettings(true);
    else targets.open(c.conversationId);
  };
}
