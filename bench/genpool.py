"""Text pools for bench/gen_bundle.py: what users of a DeepSeek-R1 chat service send, written for this benchmark.

Prompts are built by drawing sentences from these pools, so a long prompt is a few hundred draws. Most users of
such a service in China write in Chinese; some paste code, logs and documents. ``ASK_ABOUT_ERRORS`` are
questions that quote an error message: the rule named with each must not fire on a prompt (the bundle's manifest
records which). ``PASTED_METRICS`` quote vLLM's own periodic lines.
"""

from __future__ import annotations

ZH = [
    "请帮我分析一下这段代码的时间复杂度，并给出可行的优化建议。",
    "我们公司正在做一个基于大模型的智能客服系统，需要支持多轮对话和知识库检索。",
    "下面是一份产品需求文档的节选，请总结其中的关键功能点，并按优先级排序：",
    "假设函数 f(x) 在区间 [0, 1] 上连续，且 f(0) = f(1)，证明存在 c 使得 f(c) = f(c + 1/2)。",
    "请用通俗易懂的语言解释什么是混合专家模型，以及它和稠密模型相比有哪些优缺点。",
    "把下面这段英文翻译成中文，要求语句通顺，专业术语保留英文原文并在括号中注明。",
    "昨天晚上线上服务出现了大量超时，运维同学怀疑是机房网络抖动导致的，但监控上看不出明显异常。",
    "根据以上材料，写一篇八百字左右的议论文，题目自拟，观点鲜明，论证充分。",
    "第一季度营收同比增长百分之十二，主要得益于海外市场的拓展和新产品线的上市。",
    "用户反馈说在晚高峰打开页面非常慢，有时候甚至会白屏，刷新几次之后才恢复正常。",
    "请列出三种常见的排序算法，并比较它们在最好、平均和最坏情况下的时间复杂度。",
    "小明有五个苹果，给了小红两个，又去超市买了三个，现在他一共有几个苹果？请一步一步推理。",
    "以下是一份房屋租赁合同的部分条款，请指出其中可能对承租人不利的地方，并给出修改意见。",
    "这首诗表达了作者怎样的思想感情？请结合具体诗句进行赏析。",
    "春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。",
    "请写一个函数，输入一个字符串，返回其中出现次数最多的字符以及出现的次数。",
    "数据库主从延迟越来越大，慢查询日志里有很多全表扫描，应该从哪些方面排查？",
    "作为一名资深产品经理，你会如何设计一款面向老年人的健康管理应用？",
    "请根据下面的会议纪要整理出待办事项，标注负责人和截止时间，用表格输出。",
    "我们的推荐系统点击率最近一个月下降了将近两个百分点，请帮忙分析可能的原因。",
    "请给出一个三天两晚的杭州旅游攻略，预算在三千元以内，尽量避开人多的景点。",
    "孩子今年上初二，数学成绩一直不太理想，有没有什么好的学习方法可以推荐？",
    "请帮我润色这封求职信，使语气更加专业，同时突出我在分布式系统方面的经验。",
    "已知三角形的两边长分别为三和四，夹角为六十度，求第三边的长度以及三角形的面积。",
    "在昇腾服务器上部署大模型推理服务时，张量并行和专家并行应该怎样搭配比较合理？",
    "请解释一下注意力机制中的键、值缓存是什么，为什么长上下文会占用大量显存。",
    "公司打算把核心业务迁移到容器平台上，需要考虑哪些风险？请分点说明。",
    "请将下列句子改写成更加正式的书面语，并保持原意不变。",
    "最近总是失眠，晚上躺下之后脑子里想很多事情，有什么办法可以改善睡眠质量？",
    "请对比一下消息队列在削峰填谷和异步解耦两个场景下的设计差异。",
    "下面这段日志是我们服务重启前最后打印的内容，请帮忙看看可能是什么问题。",
    "请以“科技改变生活”为主题，写一段不少于三百字的演讲开场白。",
    "如果一个项目的需求频繁变更，项目经理应该如何控制范围并与客户沟通？",
    "这份财务报表中的应收账款周转天数明显变长，说明了什么问题？",
    "请帮我把这段需求拆分成若干个用户故事，每个故事都要有验收标准。",
    "我在用 Python 处理一个几十吉字节的日志文件，内存总是不够用，有没有流式处理的办法？",
    "请总结这篇论文的主要贡献、实验设置和局限性，控制在五百字以内。",
    "为什么深度学习模型在训练集上效果很好，但在测试集上表现很差？应该如何缓解？",
    "请设计一个简单的限流算法，要求支持突发流量，并说明令牌桶和漏桶的区别。",
    "黄河远上白云间，一片孤城万仞山。羌笛何须怨杨柳，春风不度玉门关。",
    "请分析一下新能源汽车行业未来五年的发展趋势，以及对上下游产业链的影响。",
    "我想学习大模型推理优化，应该按照什么顺序阅读相关资料？",
    "请检查下面的 SQL 语句是否存在注入风险，如果有，请给出安全的写法。",
    "员工绩效考核方案应该如何兼顾公平性和激励效果？请给出一个可落地的框架。",
    "这段代码在多线程环境下偶尔会出现死锁，请帮我找出原因并修复。",
    "请把以下内容整理成一份结构清晰的周报，包括本周进展、遇到的问题和下周计划。",
    "一个水池有进水管和出水管，单开进水管六小时注满，单开出水管八小时放完，同时打开需要多久注满？",
    "请说明梯度裁剪的作用，以及在混合精度训练中为什么经常需要使用损失缩放。",
]

EN = [
    "Can you explain the difference between tensor parallelism and expert parallelism for a large MoE model?",
    "Summarize the following customer support conversation in three bullet points.",
    "Write a Python function that merges overlapping intervals and returns them sorted.",
    "Our service latency doubled after the last release; here is what we changed, what should we check first?",
    "Translate the paragraph below into Chinese, keeping the technical terms in English.",
    "Prove that the square root of two is irrational.",
    "Draft a polite email to a vendor asking for a delivery update on our order.",
    "What are the trade-offs between a key-value cache with paging and a contiguous one?",
    "Given the table below, compute the year-over-year growth for each region.",
    "Explain how speculative decoding works and when it does not speed anything up.",
    "Review this pull request description and point out anything unclear.",
    "I have a list of ten thousand product names; suggest a way to deduplicate near-identical ones.",
    "Describe a test plan for a payment service that must stay available during a data-center failover.",
    "Rewrite the following paragraph so that a twelve-year-old can understand it.",
    "List five common causes of memory leaks in long-running Python services.",
    "What is the expected number of coin flips to get two heads in a row? Show your reasoning.",
    "Convert this shell script into a Makefile with the same targets.",
    "Our nightly batch job is now taking nine hours instead of four; the input grew by ten percent.",
    "Compare gRPC and REST for internal service-to-service calls in a mid-sized company.",
    "Please answer in English: what does the warning in the log excerpt below mean?",
    "Generate ten interview questions for a senior site reliability engineer.",
    "Here is a regular expression that is very slow on long inputs; why, and how do I fix it?",
    "Explain the CAP theorem with a concrete example from a shopping cart service.",
    "Write unit tests for the function below using pytest.",
    "What should a runbook for an inference cluster outage contain?",
    "Outline a migration plan from a monolith to three services without downtime.",
    "Is it safe to raise the collective communication timeout to an hour? What are the risks?",
    "Provide a short summary of the attached meeting notes and list the open decisions.",
]

CODE = [
    "def top_k(xs, k):\n    return sorted(xs, reverse=True)[:k]\n",
    "for i in range(len(items)):\n    if items[i] == target:\n        return i\nreturn -1\n",
    "SELECT user_id, COUNT(*) FROM orders WHERE created_at > '2025-07-01' GROUP BY user_id;\n",
    "class Cache:\n    def __init__(self):\n        self._d = {}\n    def get(self, k):\n        return self._d.get(k)\n",
    "import torch\nx = torch.randn(64, 7168, dtype=torch.bfloat16).npu()\ny = x @ w.t()\n",
    "with open(path) as f:\n    data = f.read()\nlines = data.split(\"\\n\")\n",
    "kubectl logs -n infer deploy/deepseek-r1 --since=1h | grep -i error\n",
    "export HCCL_CONNECT_TIMEOUT=1200\nexport HCCL_EXEC_TIMEOUT=600\n",
    "vllm serve /data/models/DeepSeek-R1-W8A8 --tensor-parallel-size 4 --data-parallel-size 4 --enable-expert-parallel\n",
]

SYSTEM = [
    "你是一个乐于助人的助手。",
    "你是一名资深的软件工程师，回答要准确、简洁，并给出可运行的代码。",
    "You are a helpful assistant. Answer concisely.",
    "你是某银行的智能客服，只回答与本行业务相关的问题，语气要礼貌。",
    "",
    "",
    "",
]

ASSISTANT = [
    "好的，我们一步一步来分析。首先需要明确问题的约束条件，然后再考虑可能的解法。",
    "Sure. The short answer is that it depends on the workload; here is how to measure it.",
    "根据您提供的信息，初步判断问题出在配置上，建议先检查以下几项。",
    "这是一个很好的问题。从原理上讲，主要有三个方面的因素。",
]

# Benign pasted logs: users ask about messages no rule is about.
PASTED_BENIGN = [
    "ImportError: libascend_hal.so: cannot open shared object file: No such file or directory",
    "WARNING 07-20 10:11:12 [utils.py:2412] Found ulimit of 65535 and failed to automatically increase with error current limit exceeds maximum limit.",
    "ModuleNotFoundError: No module named 'vllm._C'",
    "pip's dependency resolver does not currently take into account all the packages that are installed.",
    "[W compiler_depend.ts:133] Warning: Warning: Device do not support double dtype now",
]

# (rule that must not fire because of it, text a user quotes in a question)
ASK_ABOUT_ERRORS = {
    "MEM001": [
        "我们的服务昨天报了这个错：torch.OutOfMemoryError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 3; 60.96 GiB "
        "total capacity; 57.10 GiB already allocated; 57.10 GiB current active; 1.02 GiB free; 58.30 GiB reserved in total "
        "by PyTorch) 请问应该调小 max-num-batched-tokens 还是 gpu-memory-utilization？",
        "What does this mean and how do I fix it? RuntimeError: NPU out of memory. Tried to allocate 512.00 MiB (NPU 0; "
        "29.49 GiB total capacity; 28.10 GiB already allocated; 28.10 GiB current active; 120.00 MiB free; 28.90 GiB "
        "reserved in total by PyTorch)",
    ],
    "COMM002": [
        "训练任务跑到第二天就挂了，日志里是 EI0006: Getting socket times out. Reason: Remote Rank did not send the data in "
        "time. Please check the reason for the rank being stuck，这是网络问题吗？",
        "Our colleague sees 'Remote Rank did not send the data in time' on rank 5 only. Is the problem on rank 5 or elsewhere?",
    ],
    "COMM004": [
        "启动的时候报 EJ0002: The network port is down. 但是 hccn_tool 查询显示 link 是 UP，怎么回事？",
    ],
    "DEV011": [
        "npu-smi 里有一张卡显示 Device lost heartbeat，错误码 507010，需要重启整机吗？",
    ],
    "DEV010": [
        "同事说这个报错和驱动版本有关：Kernel task happen error, retCode=0x25, [aicore timeout]，ACL stream synchronize "
        "failed, error code:507014，是真的吗？",
    ],
    "QNT001": [
        "加载量化权重时报 KeyError: 'model.layers.61.self_attn.q_a_proj.weight'，是不是权重下载不完整？",
    ],
}

# vLLM's own periodic lines, pasted by users who ask what they mean. Formatted with the numbers the decoy needs.
PASTED_SPEC = (
    "我的服务日志里一直是这样：SpecDecoding metrics: Mean acceptance length: 1.00, Accepted throughput: 0.00 tokens/s, "
    "Drafted throughput: {drafted_tps:.2f} tokens/s, Accepted: 0 tokens, Drafted: {drafted} tokens, Per-position acceptance "
    "rate: 0.000, Avg Draft acceptance rate: 0.0% 这说明 MTP 没有生效吗？"
)
PASTED_KV = (
    "压测的时候看到 Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 310.2 tokens/s, Running: 64 "
    "reqs, Waiting: {waiting} reqs, GPU KV cache usage: {kv:.1f}%, Prefix cache hit rate: 3.1% 这种情况正常吗？"
)

# MindIE request bodies (the endpoint logs them at INFO on some builds) use the same pools.
CALL_STACK_DIRS = ["/home/王磊/serve", "/data/推理服务/deploy", "/opt/app/serving", "/home/liuy/work"]
PATH_DIRS = ["/data/模型/DeepSeek-R1-W8A8", "/home/张伟/ascend/log", "/data/models/DeepSeek-R1-W8A8", "/root/ascend/log"]
