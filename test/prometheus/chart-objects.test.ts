/**
 * The chart's monitoring objects as `helm template` renders them: the dashboard ConfigMap (off by
 * default; labelled the way Grafana's dashboard sidecar finds it, label and namespace configurable)
 * holding dashboards/capsules.json as it is.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { BUILD_TIMEOUT_MS } from '../support/build-on-use.ts';
import { CHART, ensureHelm, renderChart } from './chart-monitoring.ts';

beforeAll(() => ensureHelm(), BUILD_TIMEOUT_MS);

const dashboardsOf = (docs: any[]) => docs.filter((d) => d.kind === 'ConfigMap' && d.metadata.name.endsWith('-dashboards'));

describe("the chart's Grafana dashboard ConfigMap", () => {
  it('is off by default', async () => {
    expect(dashboardsOf(await renderChart())).toEqual([]);
  });

  it('when on: labelled grafana_dashboard="1" in the release namespace, holding dashboards/capsules.json unchanged', async () => {
    const [cm, ...more] = dashboardsOf(await renderChart('dashboards.enabled=true'));
    expect(more).toEqual([]);
    expect(cm.metadata).toMatchObject({ name: 'x-capsule-operator-dashboards', namespace: 'ops' });
    expect(cm.metadata.labels.grafana_dashboard).toBe('1');
    expect(Object.keys(cm.data)).toEqual(['capsules.json']);
    expect(cm.data['capsules.json']).toBe(readFileSync(join(CHART, 'dashboards', 'capsules.json'), 'utf8'));
    const d = JSON.parse(cm.data['capsules.json']);
    expect(d.uid).toBe('capsule-operator');
    // Grafana picks the data source: no hard-wired uid.
    expect(d.templating.list.find((v: any) => v.name === 'datasource')).toMatchObject({ type: 'datasource', query: 'prometheus' });
  });

  it('label, value, namespace and folder annotation follow the values', async () => {
    const [cm] = dashboardsOf(
      await renderChart(
        'dashboards.enabled=true',
        'dashboards.label=grafana_dashboards',
        'dashboards.labelValue=capsules',
        'dashboards.namespace=monitoring',
        'dashboards.annotations.grafana_folder=Capsules',
      ),
    );
    expect(cm.metadata.namespace).toBe('monitoring');
    expect(cm.metadata.labels.grafana_dashboards).toBe('capsules');
    expect(cm.metadata.labels.grafana_dashboard).toBeUndefined();
    expect(cm.metadata.annotations).toEqual({ grafana_folder: 'Capsules' });
  });
});
