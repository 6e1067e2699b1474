/**
 * Options for a validation the kernel runs once or rarely: settings, plugin manifests and plugin
 * settings, tool and provider registrations. The first time a zod object schema parses, zod
 * compiles a fast path for it (`new Function`, about a millisecond per schema), which pays off
 * only for a schema parsed over and over. Boot parses dozens of schemas once each; skipping the
 * compilation took boot after imports from 75-100 ms to 45-65 ms on these machines (`npm run
 * bench`, startup). Schemas parsed on every call (tool arguments, gateway messages) keep it.
 */
export const ONE_OFF_PARSE = Object.freeze({ jitless: true });
