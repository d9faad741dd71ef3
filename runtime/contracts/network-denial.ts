/**
 * An outgoing request a component's network grant refused (the guest got `HTTP-request-denied`, no
 * connection was made). The component host reports it; the trace writes it as `network_denied`.
 * A leaf type so the trace can name it without importing the host.
 */
export interface NetworkDenial {
  scheme: string;
  host: string;
  port: number;
}
