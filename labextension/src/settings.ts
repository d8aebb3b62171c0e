import type { ISettingRegistry } from '@jupyterlab/settingregistry';

/** The plugin's id, which is also the id of its settings schema (`schema/plugin.json`). */
export const PLUGIN_ID = 'jupyter-px:plugin';

/** The sidebar's settings, as `schema/plugin.json` declares them. */
export interface ISettings {
  defaultBackend: string;
  kubernetesImage: string;
  refreshInterval: number;
  cellTag: string;
}

const DEFAULTS: ISettings = {
  defaultBackend: 'local',
  kubernetesImage: '',
  refreshInterval: 2,
  cellTag: 'px'
};

/**
 * The user's settings over the defaults, and the loaded settings to follow changes with (`null`
 * without a registry, or when they could not be loaded: the defaults hold then).
 */
export async function loadSettings(registry: ISettingRegistry | null): Promise<{
  settings: ISettings;
  loaded: ISettingRegistry.ISettings | null;
}> {
  const settings: ISettings = { ...DEFAULTS };
  let loaded: ISettingRegistry.ISettings | null = null;
  if (registry) {
    try {
      loaded = await registry.load(PLUGIN_ID);
      Object.assign(settings, loaded.composite);
    } catch (error) {
      console.warn('jupyter-px: settings could not be loaded', error);
    }
  }
  return { settings, loaded };
}
