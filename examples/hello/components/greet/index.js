// The hello capsule's tool: greets someone, and says what it touched so `mur trace report` can
// spot a repeated read of the same greeting.
export const run = {
  run(input) {
    let args = {};
    try {
      args = JSON.parse(input.data ?? '{}');
    } catch {
      return { status: 'error', summary: 'input is not JSON', data: undefined, dataPath: undefined, truncated: false, metadata: [] };
    }
    const name = typeof args.name === 'string' && args.name ? args.name : 'world';
    return {
      status: 'passed',
      summary: undefined,
      data: JSON.stringify({ greeting: `Hello, ${name}!` }),
      dataPath: undefined,
      truncated: false,
      metadata: [['state_effect', 'read'], ['resource_id', `greeting:${name}`]],
    };
  },
};
