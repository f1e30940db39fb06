from ais_bench.benchmark.models import VLLMCustomAPIChat

models = [
    dict(
        attr="service",
        type=VLLMCustomAPIChat,
        abbr='vllm-api-general-chat',
        path="/models/DeepSeek-R1-W8A8",
        model="DeepSeek-R1-W8A8",
        request_rate = 0,
        retry = 2,
        host_ip = "10.0.0.11",
        host_port = 8000,
        max_out_len = 32768,
        batch_size=32,
        trust_remote_code=False,
        generation_kwargs = dict(
            temperature = 0,
            seed = 1234,
        ),
    )
]
