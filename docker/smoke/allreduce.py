"""2-rank all_reduce over gloo, launched by smoke.sh with tzrun --standalone."""
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
want = float(sum(range(1, dist.get_world_size() + 1)))
assert t.item() == want, f"rank {dist.get_rank()}: all_reduce gave {t.item()}, want {want}"
print(f"rank {dist.get_rank()}/{dist.get_world_size()}: all_reduce ok ({t.item()})", flush=True)
dist.destroy_process_group()
