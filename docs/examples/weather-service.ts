// The weather plugin's public types: its service and its event. Declaring them in the contract's
// open interfaces is what lets another plugin use them without importing this plugin's files.
import type {} from 'liveagent/plugin-api'; // the module the declarations below merge into

export interface WeatherService {
  /** Today's forecast for a city, in the user's units. */
  forecast(city: string): { city: string; temperature: number; units: 'C' | 'F'; rain: boolean };
}

/** The payload of the `weather_alert` event (a type alias, so it is a JSON object). */
export type WeatherAlert = { city: string; message: string };

declare module 'liveagent/plugin-api' {
  interface ServiceMap {
    weather: WeatherService;
  }
  interface PluginEvents {
    weather_alert: WeatherAlert;
  }
}

/** A stand-in for a real weather API: rain in every city whose name has an "o". */
export function createWeatherService(units: 'C' | 'F'): WeatherService {
  return {
    forecast: (city) => ({ city, temperature: units === 'C' ? 14 : 57, units, rain: /o/i.test(city) }),
  };
}
