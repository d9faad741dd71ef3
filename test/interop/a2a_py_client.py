"""Drives an A2A agent with the official Python SDK (a2a-sdk from PyPI) over one binding.

Usage: a2a_py_client.py <agent base url> <JSONRPC|HTTP+JSON|GRPC> <bearer token or ->
Prints one JSON line: the binding the client picked, the final task state and response text,
what get_task returns, and what a call without the token gets.
"""
import asyncio
import json
import sys
import uuid

import grpc
import httpx
from a2a.client import ClientConfig, create_client
from a2a.client.client import ClientCallContext
from a2a.types import GetTaskRequest, Message, Part, Role, SendMessageRequest, TaskState


async def main(url: str, binding: str, token: str) -> None:
    headers = {} if token == '-' else {'authorization': f'Bearer {token}'}
    config = ClientConfig(
        streaming=False,
        supported_protocol_bindings=[binding],
        httpx_client=httpx.AsyncClient(headers=headers, timeout=30),
        grpc_channel_factory=lambda target: grpc.aio.insecure_channel(target),
    )
    ctx = ClientCallContext(service_parameters=dict(headers)) if headers else None
    client = await create_client(url, client_config=config)
    msg = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=f'hello over {binding}')])
    last = None
    async for item in client.send_message(SendMessageRequest(message=msg), context=ctx):
        last = item
    task = last.task if last is not None and last.HasField('task') else None
    out = {'binding': binding, 'state': TaskState.Name(task.status.state) if task else None, 'text': None, 'got': None, 'anonymous': None}
    if task is not None:
        for a in task.artifacts:
            if a.name == 'response':
                out['text'] = ''.join(p.text for p in a.parts)
        got = await client.get_task(GetTaskRequest(id=task.id), context=ctx)
        out['got'] = TaskState.Name(got.status.state)
    # The same call without credentials.
    anon = await create_client(url, client_config=ClientConfig(streaming=False, supported_protocol_bindings=[binding], grpc_channel_factory=lambda t: grpc.aio.insecure_channel(t)))
    try:
        async for _ in anon.send_message(SendMessageRequest(message=msg)):
            pass
        out['anonymous'] = 'accepted'
    except Exception as e:  # noqa: BLE001 - the kind of refusal is what is reported
        out['anonymous'] = f'refused: {type(e).__name__}: {e}'[:300]
    print(json.dumps(out))


asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
