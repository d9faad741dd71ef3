/**
 * The parts of prom-client the runtime uses, each from its own module rather than the package's
 * index. Why: the index also loads the Pushgateway client, whose top-level `require('https')`
 * loads node:tls and OpenSSL's TLS state into every serving process — ≈ 2.6 MiB of RSS on Node 24
 * (measured: a process loading what `mur serve` loads idles at 56.8 MiB, 54.2 without https) for
 * a client the runtime never uses — and the cluster aggregator (node:cluster, node:dgram) and
 * Summary (tdigest). test/telemetry/prom-client-parts.test.ts holds them to the index's exports.
 */
import Counter from 'prom-client/lib/counter.js';
import collectDefaultMetrics from 'prom-client/lib/defaultMetrics.js';
import Gauge from 'prom-client/lib/gauge.js';
import Histogram from 'prom-client/lib/histogram.js';
import Registry from 'prom-client/lib/registry.js';

export { Counter, Gauge, Histogram, Registry, collectDefaultMetrics };
